<?php
use PHPUnit\Framework\TestCase;

final class GreetTest extends TestCase {
	public function test_default_name(): void {
		$this->assertSame( 'Hello, world!', codebox_demo_greet( '' ) );
	}

	public function test_name_is_sanitised(): void {
		$this->assertSame( 'Hello, Ada!', codebox_demo_greet( '<b>Ada</b>' ) );
	}

	public function test_shortcode_renders(): void {
		// The callback on its own; WordPressTest covers do_shortcode() and the_content.
		$this->assertSame( '<p class="codebox-greet">Hello, Bob!</p>', codebox_demo_shortcode( array( 'name' => 'Bob' ) ) );
	}

	public function test_wordpress_is_loaded(): void {
		$this->assertTrue( function_exists( 'wp_insert_post' ) );
	}
}
